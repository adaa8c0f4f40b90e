"""Simulator throughput: one algorithm on one graph under each strategy, functional run cached.

Floors (issue 3): one strategy < 3 s and < 4 GB peak on one core; the functional BFS < 5 s.
Targets (issue 11, topology sweeps in O(active work)): one strategy <= 1 s on
rmat:scale=20,ef=16 and <= 2 s on USA-road-FLA, and at most 3x the functional run's time.
The functional run and each strategy are timed alike: the first wall and CPU seconds, and the
best wall seconds over ``--repeat`` runs (later runs reuse the process's memory, as a tuning
worker does); each strategy's best is also printed as a ratio to the functional run's best.
``--fresh`` runs each strategy in a process of its own (its graph loaded and its functional
run done there first), so its first run pays what a one-off ``warpsweep simulate`` pays: the
first touch of its memory, its shapes' first layouts, what a run keeps per work for the next;
"x 1st" is that first run's time over the functional run's first.
``--full-layout`` costs every unit of every sweep (the reference path the sparse one must
agree with), ``--one-by-one`` each sweep on its own rather than runs of small ones together
(``simulator.driver._BATCH_ACTIVE``), for before/after comparisons.

Run: python bench/bench_simulator.py [--spec SPEC] [--algo bfs] [--strategies ...]
e.g. python bench/bench_simulator.py --spec file:../shared/graphs/USA-road-FLA.gr.gz
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the floor is stated

from simulator import driver  # noqa: E402
from simulator import engine  # noqa: E402
from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402
from simulator.errors import ConfigError  # noqa: E402
from simulator.errors import WarpsweepError  # noqa: E402
from simulator.strategy import Strategy  # noqa: E402
from tuner.cli.args import positive_arg  # noqa: E402
from tuner.memory import keep_freed_memory  # noqa: E402

DEFAULT_STRATEGIES = [
    "mapping=thread",
    "mapping=vwarp,w=8",
    "mapping=vwarp,w=32",
    "mapping=vwarp,w=8,chunk=64,distribution=dynamic",
    "mapping=thread,defer_threshold=64",
    "mapping=vwarp,w=8,driven=data,push=chunked",
    "driven=temporal,switch_to_topology=0.1",
    "driven=spatial,partition=16",
    "mapping=wer+",
    "mapping=adaptive",
    "mapping=thread,donate_threshold=4",
]


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def main() -> int:
    """Run the benchmark; bad input (a graph spec, an algorithm, a device) as one line."""
    try:
        run()
    except WarpsweepError as exc:
        print(f"bench_simulator: error: {exc}", file=sys.stderr)
        return 2
    return 0


def run() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spec", default="rmat:scale=20,ef=16,seed=1")
    parser.add_argument("--algo", default="bfs")
    parser.add_argument("--device", default="h100")
    parser.add_argument("--strategies", nargs="*", default=DEFAULT_STRATEGIES)
    parser.add_argument("--full-layout", action="store_true",
                        help="cost every unit of every sweep (the reference path)")
    parser.add_argument("--one-by-one", action="store_true",
                        help="cost each sweep on its own (runs of small sweeps are costed "
                             "together by default)")
    parser.add_argument("--repeat", type=positive_arg, default=1,
                        help="run the functional run and simulate each strategy this many "
                             "times; print the first and the fastest wall time (later runs "
                             "reuse the process's memory, as a tuning worker does)")
    parser.add_argument("--return-freed-memory", action="store_true",
                        help="leave glibc's default of returning large freed blocks to the "
                             "system at once (the tool keeps them for reuse)")
    parser.add_argument("--fresh", action="store_true",
                        help="run each strategy in a process of its own, after its own graph "
                             "load and functional run: its first run is a one-off run's")
    parser.add_argument("--rows-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    for text in args.strategies:  # a typo: the user's error, as one line, before any run
        Strategy.parse(text)
    if args.fresh:
        print_header()
        for text in args.strategies:
            child = [sys.executable, __file__, "--rows-only", "--spec", args.spec, "--algo",
                     args.algo, "--device", args.device, "--repeat", str(args.repeat),
                     *[flag for flag, given in (("--full-layout", args.full_layout),
                                                ("--one-by-one", args.one_by_one),
                                                ("--return-freed-memory",
                                                 args.return_freed_memory)) if given],
                     "--strategies", text]
            code = subprocess.run(child, check=False).returncode
            if code:  # the child said why (bad input: one line, 2)
                raise SystemExit(code)
        return
    engine._SPARSE_SWEEPS = not args.full_layout
    if args.one_by_one:
        driver._BATCH_ACTIVE = 0
    if not args.return_freed_memory:
        keep_freed_memory()

    t0 = time.perf_counter()
    graph = load_graph(args.spec)
    if not args.rows_only:
        print(f"graph {graph}: loaded in {time.perf_counter() - t0:.2f} s")
    functional_walls, functional_cpus = [], []
    for _ in range(max(1, args.repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        fr = functional_run(graph, args.algo)
        functional_walls.append(time.perf_counter() - t0)
        functional_cpus.append(time.process_time() - c0)
    functional_s = min(functional_walls)
    if not args.rows_only:
        print(f"functional {args.algo}: {functional_walls[0]:.2f} s wall, "
              f"{functional_cpus[0]:.2f} s CPU, best {functional_s:.2f} s, "
              f"{len(fr.iterations)} iterations, {fr.edges_expanded:,} edges (floor 5 s)")
        print_header()
    for text in args.strategies:
        try:
            driver.check_applicable(Strategy.parse(text), args.algo)
        except ConfigError as exc:  # a hybrid of the list, for PageRank
            print(f"{text:50s} skipped: {exc}", flush=True)
            continue
        walls, cpus = [], []
        for _ in range(max(1, args.repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            r = simulate(graph, args.algo, text, args.device, functional=fr)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        cpu = cpus[0]
        wall, best = walls[0], min(walls)
        print(f"{text:50s} {wall:7.2f} {cpu:7.2f} {best:7.2f} {best / functional_s:6.2f} "
              f"{wall / functional_walls[0]:6.2f} {r.edges_touched / best / 1e6:9.1f} "
              f"{r.time_us:12.1f} {r.simd_efficiency:8.3f} {peak_gb():7.2f}", flush=True)
    if not args.rows_only:
        print(f"peak memory {peak_gb():.2f} GB (floor 4 GB)")


def print_header() -> None:
    """The strategies' table header: first run's wall and CPU seconds, the best wall
    seconds, the best and the first over the functional run's, the process's peak memory
    so far (with ``--fresh``, the strategy's own: its process's)."""
    print(f"{'strategy':50s} {'wall s':>7s} {'cpu s':>7s} {'best s':>7s} {'x func':>6s} "
          f"{'x 1st':>6s} {'Medges/s':>9s} {'sim time_us':>12s} {'simd_eff':>8s} "
          f"{'peak GB':>7s}")


if __name__ == "__main__":
    sys.exit(main())
