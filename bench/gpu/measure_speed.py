"""Issue 43's target for `warpsweep measure`: one configuration on a 10M-edge graph, the
graph's upload included, under 2 s for the whole command.

Runs the verb ``--repeat`` times, each in a process of its own as a user runs it (the first
fills warpsweep's graph cache and CuPy's kernel cache; the later ones are the figure), and
prints each run's wall time, its phases as the verb reports them, and what is left (Python's
and CUDA's start-up, the GPU's set-up). Needs a GPU and CuPy.

Run: PYTHONPATH=. python bench/gpu/measure_speed.py [--graph SPEC] [--algo bfs]
         [--config mapping=vwarp,w=8] [--repeat 4]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default="rmat:scale=19,ef=10,seed=1")
    parser.add_argument("--algo", default="bfs")
    parser.add_argument("--config", default="mapping=vwarp,w=8")
    parser.add_argument("--reps", type=int, default=1, help="the verb's --reps")
    parser.add_argument("--repeat", type=int, default=4, help="processes, the first a warm-up")
    args = parser.parse_args()
    command = [sys.executable, "-m", "tuner.cli.measure", "--graph", args.graph, "--algo",
               args.algo, "--config", args.config, "--reps", str(args.reps), "--json"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [os.getcwd(), *filter(None, [os.environ.get("PYTHONPATH")])])}
    print(" ".join(command[1:]))
    walls = []
    for run in range(args.repeat):
        t0 = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        wall = time.perf_counter() - t0
        if done.returncode != 0:
            sys.exit(f"run {run} exited {done.returncode}: {done.stderr.strip()}")
        record = json.loads(done.stdout)
        phases = {k[:-2]: v for k, v in record.items() if k.endswith("_s")}
        rest = wall - sum(phases.values())
        shown = "  ".join(f"{k} {v:.2f}" for k, v in phases.items())
        print(f"run {run}{' (warm-up)' if run == 0 else ''}: {wall:.2f} s  ({shown}  "
              f"start-up and the rest {rest:.2f})", flush=True)
        if run:
            walls.append(wall)
    if walls:
        print(f"whole command, after the warm-up: {min(walls):.2f}-{max(walls):.2f} s "
              f"(target < 2 s); {record['graph']} {record['m']:,} stored edges on "
              f"{record['gpu_name']}")


if __name__ == "__main__":
    main()
