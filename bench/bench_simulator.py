"""Simulator throughput: BFS on rmat:scale=20,ef=16 under one strategy, functional run cached.

Floors (issue 3): one strategy < 3 s and < 4 GB peak on one core; the functional BFS < 5 s.
Run: python bench/bench_simulator.py [--spec SPEC] [--strategies ...]
"""

from __future__ import annotations

import argparse
import os
import resource
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one core, as the floor is stated

from simulator import functional_run  # noqa: E402
from simulator import load_graph  # noqa: E402
from simulator import simulate  # noqa: E402

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
    parser.add_argument("--device", default="h100")
    parser.add_argument("--strategies", nargs="*", default=DEFAULT_STRATEGIES)
    args = parser.parse_args()

    t0 = time.perf_counter()
    graph = load_graph(args.spec)
    print(f"graph {graph}: loaded in {time.perf_counter() - t0:.2f} s")
    t0 = time.perf_counter()
    fr = functional_run(graph, "bfs")
    functional_s = time.perf_counter() - t0
    print(f"functional BFS: {functional_s:.2f} s, {len(fr.iterations)} levels, "
          f"{fr.edges_expanded:,} edges (floor 5 s)")
    header = ("strategy", "wall s", "Medges/s", "sim time_us", "simd_eff")
    print(f"{header[0]:50s} {header[1]:>7s} {header[2]:>9s} {header[3]:>12s} {header[4]:>8s}")
    for text in args.strategies:
        t0 = time.perf_counter()
        r = simulate(graph, "bfs", text, args.device, functional=fr)
        wall = time.perf_counter() - t0
        print(f"{text:50s} {wall:7.2f} {r.edges_touched / wall / 1e6:9.1f} "
              f"{r.time_us:12.1f} {r.simd_efficiency:8.3f}")
    print(f"peak memory {peak_gb():.2f} GB (floor 4 GB)")


if __name__ == "__main__":
    main()
