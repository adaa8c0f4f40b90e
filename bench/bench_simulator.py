"""Simulator throughput: one algorithm on one graph under each strategy, functional run cached.

Floors (issue 3): one strategy < 3 s and < 4 GB peak on one core; the functional BFS < 5 s.
Targets (issue 11, topology sweeps in O(active work)): one strategy <= 1 s on
rmat:scale=20,ef=16 and <= 2 s on USA-road-FLA, and at most 3x the functional run's time.
The functional run and each strategy are timed alike: the first wall and CPU seconds, and the
best wall seconds over ``--repeat`` runs (later runs reuse the process's memory, as a tuning
worker does); each strategy's best is also printed as a ratio to the functional run's best.
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
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the floor is stated

from simulator import driver  # noqa: E402
from simulator import engine  # noqa: E402
from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402
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


def main() -> None:
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
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the functional run and simulate each strategy this many "
                             "times; print the first and the fastest wall time (later runs "
                             "reuse the process's memory, as a tuning worker does)")
    parser.add_argument("--return-freed-memory", action="store_true",
                        help="leave glibc's default of returning large freed blocks to the "
                             "system at once (the tool keeps them for reuse)")
    args = parser.parse_args()
    engine._SPARSE_SWEEPS = not args.full_layout
    if args.one_by_one:
        driver._BATCH_ACTIVE = 0
    if not args.return_freed_memory:
        keep_freed_memory()

    t0 = time.perf_counter()
    graph = load_graph(args.spec)
    print(f"graph {graph}: loaded in {time.perf_counter() - t0:.2f} s")
    functional_walls, functional_cpus = [], []
    for _ in range(max(1, args.repeat)):
        t0, c0 = time.perf_counter(), time.process_time()
        fr = functional_run(graph, args.algo)
        functional_walls.append(time.perf_counter() - t0)
        functional_cpus.append(time.process_time() - c0)
    functional_s = min(functional_walls)
    print(f"functional {args.algo}: {functional_walls[0]:.2f} s wall, {functional_cpus[0]:.2f} "
          f"s CPU, best {functional_s:.2f} s, {len(fr.iterations)} iterations, "
          f"{fr.edges_expanded:,} edges (floor 5 s)")
    header = ("strategy", "wall s", "cpu s", "best s", "x func", "Medges/s", "sim time_us",
              "simd_eff")
    print(f"{header[0]:50s} {header[1]:>7s} {header[2]:>7s} {header[3]:>7s} {header[4]:>6s} "
          f"{header[5]:>9s} {header[6]:>12s} {header[7]:>8s}")
    for text in args.strategies:
        walls, cpus = [], []
        for _ in range(max(1, args.repeat)):
            t0, c0 = time.perf_counter(), time.process_time()
            r = simulate(graph, args.algo, text, args.device, functional=fr)
            walls.append(time.perf_counter() - t0)
            cpus.append(time.process_time() - c0)
        cpu = cpus[0]
        wall, best = walls[0], min(walls)
        print(f"{text:50s} {wall:7.2f} {cpu:7.2f} {best:7.2f} {best / functional_s:6.2f} "
              f"{r.edges_touched / best / 1e6:9.1f} {r.time_us:12.1f} {r.simd_efficiency:8.3f}",
              flush=True)
    print(f"peak memory {peak_gb():.2f} GB (floor 4 GB)")


if __name__ == "__main__":
    main()
