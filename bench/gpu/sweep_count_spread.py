"""How many launches the same configuration takes from run to run on the GPU.

SSSP's and CC's kernels race: which lowered value a vertex reads within a sweep or a worklist
launch depends on the warps' timing, so the sweeps (launches) a run takes can differ between
runs of one configuration, and on a small graph one launch more is a tenth of its time.
Per (graph, configuration), ``--runs`` runs of the host loop (after one to warm up), each
answer checked against the functional run, and the launch counts they took: their minimum,
median and maximum, beside the simulator's count (``--sim-device``, unfitted preset).

Run on a machine with an NVIDIA GPU and CuPy, from the repo's root:
PYTHONPATH=. python bench/gpu/sweep_count_spread.py --graphs-dir DIR [--runs 15]
[--graphs ca-AstroPh.txt.gz grid2d:rows=1,cols=2048 ...] [--algo cc] [--sim-device h200]
(a name with a colon is a generated graph's spec, else a file in --graphs-dir)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import configs  # noqa: E402

from simulator import simulate  # noqa: E402
from simulator.errors import WarpsweepError  # noqa: E402
from tuner.measure.check import check_output  # noqa: E402
from tuner.measure.check import reference_output  # noqa: E402
from tuner.measure.measure import Session  # noqa: E402
from tuner.measure.plan import plan_for  # noqa: E402

GRAPHS = ("ca-AstroPh.txt.gz", "p2p-Gnutella31.txt.gz", "coAuthorsDBLP.mtx.gz",
          "web-NotreDame.txt.gz")
# the CC chunk catalog's sweeps (W = 1, 2, 8, 32 with chunks) and the worklists that win on
# the small graphs
CONFIGS = configs.PR_CHUNKS + (
    "mapping=vwarp,w=8,driven=data,push=atomic", "mapping=vwarp,w=32,driven=data,push=atomic")


def launch_counts(session: Session, prepared, algorithm: str, config: str, runs: int
                  ) -> tuple[list[int], bool]:
    """The launches each of ``runs`` runs of ``config`` took, and whether every answer was
    right (a warm-up run first, uncounted)."""
    variant = configs.TOPOLOGY_VARIANT if "driven=" not in config else "plain"
    plan = plan_for(algorithm, config, variant)
    kernels = session.runner.compile_kernels(plan.names())
    dg = session.device_graph(prepared, algorithm)
    dg.bound_pushes(kernels)
    dg.allow_shared(plan, kernels)
    outlier_grid = dg.outlier_grid(plan, kernels)
    reference = reference_output(prepared.runs[algorithm], plan.driven)
    counts, correct = [], True
    for run in range(runs + 1):
        dg.reset(plan)
        dg.clock.start(False)
        taken = dg.run(plan, kernels, outlier_grid)
        session.cp.cuda.Device().synchronize()
        correct &= check_output(algorithm, dg.answer(plan, taken.iterations), reference) is None
        if run:
            counts.append(taken.launches)
    return counts, correct


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graphs-dir", default=configs.REPO_GRAPHS_DIR)
    parser.add_argument("--graphs", nargs="*", default=list(GRAPHS))
    parser.add_argument("--algo", default="cc", choices=("cc", "sssp"))
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--sim-device", default="h200")
    args = parser.parse_args()
    try:
        session = Session()
    except WarpsweepError as exc:  # no CuPy or no GPU: one line
        raise SystemExit(f"sweep_count_spread: {exc}") from None
    print(f"# {session.gpu_name}; {args.runs} runs a configuration; simulator on "
          f"{args.sim_device}")
    print(f"{'graph':22s} {'config':45s} {'min':>4s} {'med':>5s} {'max':>4s} {'sim':>4s} "
          f"{'ok':>3s}")
    for graph, prepared in configs.prepared_graphs(args.graphs, args.graphs_dir, args.algo):
        t0 = time.perf_counter()
        for config in CONFIGS:
            counts, correct = launch_counts(session, prepared, args.algo, config, args.runs)
            sim = simulate(graph, args.algo, config, args.sim_device,
                           functional=prepared.runs[args.algo]).launches
            print(f"{prepared.name:22s} {config:45s} {min(counts):4d} "
                  f"{statistics.median(counts):5.1f} {max(counts):4d} {sim:4d} "
                  f"{'yes' if correct else 'NO':>3s}", flush=True)
        print(f"# {prepared.name}: {time.perf_counter() - t0:.0f} s", flush=True)


if __name__ == "__main__":
    main()
