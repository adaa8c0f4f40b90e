"""Simulator speed of the working tree against an earlier revision, in one process.

This machine's speed drifts by tens of percent between runs minutes apart, more than the
change a speed-up usually makes, so two runs of ``bench_simulator.py`` cannot tell it. Here
the revision's ``simulator`` package (checked out in a temporary git worktree) and the
working tree's are imported side by side and simulate each strategy in turn, one then the
other, ``--repeat`` times; the best wall seconds of each, their ratio (new / old) and
whether both gave the same simulated time are printed. The functional run is each
package's own, computed once and not timed.

Run: python bench/compare_revisions.py --base REV [--spec SPEC] [--algo bfs] [--repeat 3]
                                       [--strategies ...]
e.g. python bench/compare_revisions.py --base HEAD~3 \
         --spec file:../shared/graphs/USA-road-FLA.gr.gz
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as bench_simulator.py

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.bench_simulator import DEFAULT_STRATEGIES  # noqa: E402
from bench.revisions import old_and_new  # noqa: E402
from tuner.memory import keep_freed_memory  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the git revision to compare against")
    parser.add_argument("--spec", default="rmat:scale=20,ef=16,seed=1")
    parser.add_argument("--algo", default="bfs")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--strategies", nargs="*", default=DEFAULT_STRATEGIES)
    args = parser.parse_args()
    keep_freed_memory()
    with old_and_new(args.base, "compare_revisions") as packages:
        graph = packages["new"].load_graph(args.spec)
        functional = {name: package.functional_run(graph, args.algo)
                      for name, package in packages.items()}
        print(f"graph {graph}, {args.algo}; old = {args.base}, new = working tree; "
              f"best of {args.repeat}")
        for text in args.strategies:
            best = {"old": float("inf"), "new": float("inf")}
            simulated = {}
            for _ in range(max(1, args.repeat)):
                for name, package in packages.items():
                    t0 = time.perf_counter()
                    result = package.simulate(graph, args.algo, text, args.device,
                                              functional=functional[name])
                    best[name] = min(best[name], time.perf_counter() - t0)
                    simulated[name] = result.time_us
            same = abs(simulated["old"] - simulated["new"]) <= 1e-9 * abs(simulated["old"])
            print(f"{text:50s} old {best['old']:6.2f} s  new {best['new']:6.2f} s  "
                  f"new/old {best['new'] / best['old']:5.2f}  "
                  f"{'same time_us' if same else 'TIME_US DIFFERS'}", flush=True)


if __name__ == "__main__":
    main()
